"""`python -m fslab`: the same as the `fslab` command."""

from fslab.cli import main

if __name__ == "__main__":
    main()
