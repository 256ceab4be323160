"""Basic colour terms and the sRGB values the synthetic suite paints with."""
COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40), "green": (40, 190, 60), "blue": (40, 80, 230), "yellow": (235, 215, 40),
    "white": (245, 245, 245), "magenta": (210, 50, 200), "cyan": (40, 210, 220), "orange": (245, 140, 30),
}
