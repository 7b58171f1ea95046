"""nvcre.compiler: the pure rendering compiler (documents + cluster facts in, manifests out)."""
