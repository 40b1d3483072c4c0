"""FPDeep convolution engine blocks (FPDeep sections 4.1, 4.3, 5.3-5.5): the line buffer
that turns a streamed feature/error map into K x K windows, and the K x K conv tile."""
