"""C and C++ (in progress, issue 46): the readers of their build systems. Not yet a language of
the registry: the folder exposes no ``LANGUAGE`` until its inference, runners and images are
in."""
