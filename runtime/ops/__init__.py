"""The operator's day against a live cluster: submit a run, wait for it, collect what it proved.

Used by ``nvcrectl`` and the MCP server. Every object it creates comes out of the compiler
(:mod:`nvcre.compiler.compose`); every verdict comes from :mod:`nvcre.runtime.judge.verdict`.
"""
