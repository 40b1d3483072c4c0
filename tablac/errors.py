"""The one error class every bad program or bad plan raises."""


class CompileError(Exception):
    """A diagnosable problem in a TABLA program or a compile plan.

    str() is ``"file:line:col: error: msg"``; line and col are 1-based (0 when unknown).
    """

    def __init__(self, msg: str, file: str = "<input>", line: int = 0, col: int = 0):
        self.file = file
        self.line = int(line or 0)
        self.col = int(col or 0)
        self.msg = msg
        super().__init__(str(self))

    def __str__(self):
        return f"{self.file}:{self.line}:{self.col}: error: {self.msg}"

    def __reduce__(self):
        return (CompileError, (self.msg, self.file, self.line, self.col))
