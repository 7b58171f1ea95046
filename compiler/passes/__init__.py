"""The compiler passes, one module each; ``nvcre.compiler.pipeline`` lists them in order."""
