"""holm: isolated Linux desktops that agents drive, with a trace that can be forked."""

__version__ = "0.1.0"
__all__ = ["__version__"]
