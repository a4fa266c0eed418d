"""The explorer: a page people use in a browser to try a profile and read the answer."""
