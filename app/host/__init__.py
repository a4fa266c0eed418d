"""The plugin host: the hook specifications, the plugin manager and the loaded options with their kernels."""
