"""Run directories: writing one (`rundir`) and reading runs back (`read`), their
summary and Markdown report (`summary`) and the HTML report (`html`)."""
