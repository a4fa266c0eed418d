"""compute-advisor: where large-model training should run."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("compute-advisor")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0"
