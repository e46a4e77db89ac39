"""cotune's benchmarks on real published measurements (``python -m benchmarks``).

A replay launcher answers probes from the Pollux, Gavel and Shockwave traces; an
exhaustive oracle knows every measurement. See ``benchmarks/README.md``.
"""
