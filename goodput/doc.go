package goodput
