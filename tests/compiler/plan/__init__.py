"""Tests of ``nvcre.compiler.plan`` (this folder mirrors compiler/plan/)."""
