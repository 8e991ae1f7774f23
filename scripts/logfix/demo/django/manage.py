#!/usr/bin/env python3
"""A tiny Django project whose tests exercise the Django runner's verbose output."""
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "site_conf.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
