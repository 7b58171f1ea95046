"""Tests of ``nvcre.compiler.diagnose`` (this folder mirrors compiler/diagnose/)."""
