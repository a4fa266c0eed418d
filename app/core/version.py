"""The plugin SDK's version (semantic versioning): what ``app.sdk.__version__`` says and what the host
checks each plugin's declared range against (``app.host.compatibility``)."""

SDK_VERSION = "4.1.0"
