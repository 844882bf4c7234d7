from mlsubmit.cli import main

main()
