"""Tests of ``nvcre.compiler.install`` (this folder mirrors compiler/install/)."""
