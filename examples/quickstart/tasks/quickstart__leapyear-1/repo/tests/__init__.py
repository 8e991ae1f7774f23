# Test package for datecal.
