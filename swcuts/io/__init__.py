"""Files in and out: images, optical-flow files, output sets written as one unit, and the error for a user's input."""
