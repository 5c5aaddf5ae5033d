"""What a module exposes: ``SymbolTable.exports`` — ``__all__`` when declared, else public names.

``public_symbol`` artifacts are exactly these names for every package ``__init__``, so the rules
pinned here (which ``__all__`` forms are read, what happens when one is dynamic, which imported
names count as public) are the extractor's.
"""

from __future__ import annotations

from kb_assets.core.symbols.table import SymbolTable
from tests.programs import program_from_files


# -- exports --------------------------------------------------------------------------------------
def test_exports_follow_all_including_references_to_other_modules() -> None:
    """``__all__`` is evaluated in order: set, ``+=``, ``.extend``, ``.append`` and another
    module's ``__all__`` through whatever name the module binds for it."""
    files = {
        "p/__init__.py": (
            "from . import sub as s\n__all__ = ['a']\n__all__ += s.__all__\n__all__.extend(['b'])\n"
            "__all__.append('c')\n"
        ),
        "p/sub.py": "__all__ = ['x', 'y']\n",
    }
    exports = SymbolTable(program_from_files(files)).exports("p")
    assert exports.names == ("a", "x", "y", "b", "c")
    assert exports.declared
    assert not exports.dynamic


def test_dynamic_all_falls_back_to_public_names_and_says_where() -> None:
    """An ``__all__`` that cannot be read statically is reported with its line; with nothing
    static left the public names stand in."""
    files = {
        "p/__init__.py": "from .r import NAMES\n__all__ = list(NAMES)\n\ndef load(): pass\n",
        "p/r.py": "",
    }
    exports = SymbolTable(program_from_files(files)).exports("p")
    assert exports.dynamic == ((2, "__all__ = list(NAMES)"),)
    assert exports.names == ("load", "r")


def test_public_names_without_all() -> None:
    """Without ``__all__``: definitions, star-imported names, redundant aliases and the package's
    own submodules count; plain imports, underscored names and unimported submodules do not."""
    files = {
        "p/__init__.py": (
            "import os\nfrom .impl import helper\nfrom .impl import Exported as Exported\n"
            "from .stars import *\nfrom . import sub\nfrom .loaded import thing\n"
            "VERSION = '1'\n__version__ = '1'\ndef _private(): pass\nclass Public: pass\n"
        ),
        "p/impl.py": "def helper(): pass\nclass Exported: pass\n",
        "p/stars.py": "def starred(): pass\n",
        "p/sub.py": "",
        "p/loaded.py": "thing = 1\n",
        "p/unimported.py": "",
    }
    exports = SymbolTable(program_from_files(files)).exports("p")
    assert not exports.declared
    assert exports.names == ("Exported", "starred", "sub", "VERSION", "Public", "impl", "stars", "loaded")


def test_all_variables_resolve_to_their_values() -> None:
    """A variable in ``__all__`` stands for its value: another module's ``__all__`` imported under
    an alias (Django's ``from .fields import __all__ as fields_all``), a list literal, or
    ``__all__`` itself; a variable whose value is unknown makes ``__all__`` dynamic."""
    files = {
        "p/__init__.py": (
            "from .fields import *\nfrom .fields import __all__ as fields_all\n"
            "_extra = ['Extra']\n__all__ = fields_all + _extra\n__all__ = __all__ + ['Last']\n"
            "__all__ += unknown\n"
        ),
        "p/fields.py": "__all__ = ['CharField', 'IntegerField']\n",
    }
    exports = SymbolTable(program_from_files(files)).exports("p")
    assert exports.names == ("CharField", "IntegerField", "Extra", "Last")
    assert exports.dynamic == ((6, "unknown"),)
