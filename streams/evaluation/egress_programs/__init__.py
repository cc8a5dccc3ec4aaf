"""The programs ``streams.evaluation.egress`` runs inside containers, shipped as their source.

* ``proxy.py``: the registry egress proxy, run by the proxy container's ``python3``
  (``python3 -I proxy.py CONFIG``, the file copied into the container);
* ``forwarder.py``: the sandbox's forwarder from ``127.0.0.1:3128`` to the proxy's Unix socket,
  run by the sandbox's ``python3`` (``python3 -I -c SOURCE SOCKET PORT``).

``egress.py`` reads their text with ``importlib.resources`` and hands it to the container; only
the tests import them. They must stay **stdlib-only** (the containers have a Python and
nothing else: not this package, not its dependencies; each is one file, so no relative
imports either) and run on any ``python3`` from 3.7 on (hence ``asyncio.TimeoutError``, not
the builtin it is an alias of since 3.11 only, and no syntax newer than 3.7). The tests check
both.
"""
