"""A package's public names, imported from their modules on first use (PEP 562), so that
``import online`` costs nothing and ``online.replay`` still works."""
from __future__ import annotations

import importlib


def lazy_namespace(package: str, exports: dict[str, str]):
    """(__getattr__, __dir__, __all__) for a package whose public `name` lives in `exports[name]`
    (a module path relative to the package, e.g. ".replay")."""

    def __getattr__(name):
        try:
            module = exports[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        return getattr(importlib.import_module(module, package), name)

    def __dir__():
        return sorted(exports)

    return __getattr__, __dir__, sorted(exports)
