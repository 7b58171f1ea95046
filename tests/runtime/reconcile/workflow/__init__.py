"""Tests of ``nvcre.runtime.reconcile.workflow`` (this folder mirrors runtime/reconcile/workflow/)."""
