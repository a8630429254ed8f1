from skillopt.cli.main import run

run()
