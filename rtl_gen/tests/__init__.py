"""Plain pytest tests of the MyHDL generators and the committed ip/ packages."""
