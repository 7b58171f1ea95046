"""Tests of ``nvcre.runtime.reconcile.job`` (this folder mirrors runtime/reconcile/job/)."""
