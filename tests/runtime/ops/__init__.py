"""Tests of ``nvcre.runtime.ops`` (this folder mirrors runtime/ops/)."""
