"""Tests of ``nvcre.compiler.detect`` (this folder mirrors compiler/detect/)."""
