#!/bin/sh
# Regenerate the build system from configure.ac and Makefile.am.
exec autoreconf --force --install
