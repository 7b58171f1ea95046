"""Tests of ``nvcre.runtime.ops.install`` (this folder mirrors runtime/ops/install/)."""
