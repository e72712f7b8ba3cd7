examples/embed/embed_demo: examples/embed/embed_demo.c
