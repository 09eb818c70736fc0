"""The neural RST parser: frozen MiniLM word vectors, small numpy heads.

Importing this package needs only numpy; torch and transformers are imported when a parser is built.
"""
