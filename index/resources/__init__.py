"""Data files of the index layer (shipped with the package)."""
