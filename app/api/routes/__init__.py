"""HTTP routes: each translates a request into index calls and the answer back."""
