"""Tests of ``nvcre.compiler.api`` (this folder mirrors compiler/api/)."""
