"""Tests of ``nvcre.runtime.kube`` (this folder mirrors runtime/kube/)."""
