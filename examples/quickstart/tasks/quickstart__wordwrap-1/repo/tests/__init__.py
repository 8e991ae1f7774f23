# Test package for wrap.
