"""Each package's curated namespace: every public name resolves to what its module defines (not a
submodule of the same name), has a docstring, and importing the package imports nothing else."""
import importlib
import subprocess
import sys
import types

import pytest

PACKAGES = ("tdmodels", "inference", "online", "diagnostics")


@pytest.mark.parametrize("package", PACKAGES)
def test_public_names_resolve_and_are_documented(package):
    pkg = importlib.import_module(package)
    assert pkg.__all__ == sorted(pkg.__all__) and dir(pkg) == pkg.__all__
    for name in pkg.__all__:
        for module in set(pkg._EXPORTS.values()):
            importlib.import_module(module, package)      # a submodule import must not shadow a name
        obj = getattr(pkg, name)
        assert not isinstance(obj, types.ModuleType), f"{package}.{name} is a module"
        assert obj is getattr(importlib.import_module(pkg._EXPORTS[name], package), name)
        assert (obj.__doc__ or "").strip(), f"{package}.{name} has no docstring"
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        pkg.nothing


def test_importing_a_package_imports_none_of_its_modules():
    code = ("import sys, tdmodels, inference, online, diagnostics; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('tdmodels', 'inference', 'online', 'diagnostics') and '.' in m and m != 'tdmodels._lazy'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
