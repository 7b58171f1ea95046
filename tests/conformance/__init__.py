"""Offline conformance tests: NVCRE's contracts, checked without a cluster."""
