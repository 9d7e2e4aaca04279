"""Optional dependencies, imported where a feature needs them: a missing one names the extra that
installs it (``pip install 'sfclayer[xarray]'``) instead of a bare ``ModuleNotFoundError``."""

import importlib

__all__ = ["require"]


def require(module, extra, feature):
    """``import module``, or ModuleNotFoundError naming ``feature`` and the extra that installs it.

    >>> require("no_such_module_here", "geo", "sfclayer.zonal_stats")
    Traceback (most recent call last):
    ...
    ModuleNotFoundError: sfclayer.zonal_stats needs no_such_module_here, which is not installed: pip install 'sfclayer[geo]'
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ModuleNotFoundError(f"{feature} needs {module}, which is not installed: pip install 'sfclayer[{extra}]'",
                                  name=module) from None
