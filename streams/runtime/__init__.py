"""The runtime: the stream graph (topology), the Faust app, the one supervise loop, and the
in-process runs (mine/run/demo, replay)."""
