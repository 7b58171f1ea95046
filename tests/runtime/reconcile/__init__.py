"""Tests of ``nvcre.runtime.reconcile`` (this folder mirrors runtime/reconcile/)."""
