"""Build hook for the one compiled module, ``dtdialog._phrase_align`` (the SG feature's phrase alignment).

Everything else about the package is in ``pyproject.toml``. The extension is optional: where no C compiler is
found the build goes on without it, and ``dtdialog.selection.syntactic_generalization`` runs the same alignment in Python.
"""

from Cython.Build import cythonize
from setuptools import Extension, setup

extensions = cythonize([Extension("dtdialog._phrase_align", ["dtdialog/_phrase_align.pyx"])], quiet=True)
for extension in extensions:
    extension.optional = True  # set after cythonize: the Extension objects it returns do not carry it over
setup(ext_modules=extensions)
