# Test package for slug.
