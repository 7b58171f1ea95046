"""Tests of ``nvcre.runtime.evidence`` (this folder mirrors runtime/evidence/)."""
