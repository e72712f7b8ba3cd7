#!/bin/bash
echo "Hello, ${NAME:-world}, from bash $BASH_VERSION"
