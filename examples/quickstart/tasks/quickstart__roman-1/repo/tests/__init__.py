# Test package for roman.
