"""The picture's own checks after a render: a dark ground, and writing found by reading it (Tesseract) or by its
shape (a text detector and its recogniser, whose weights ship in a wheel)."""
