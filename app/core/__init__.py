"""The core: the methodology's types, formulas and kernels, pure (no I/O, no clock, no globals), on
which the engine (``app.engine``), the plugin host (``app.host``) and the plugins' front door
(``app.sdk``) are built. Its modules are imported by name; plugins import ``app.sdk`` alone.
"""
