from mllint.cli import main

main()
