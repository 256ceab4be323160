"""The self-contained HTML report and the table exports (CSV, JSON, LaTeX)."""
from .page import write_html
from .tables import PaperTable, paper_tables, write_table_csv, write_table_json, write_table_latex

__all__ = ["PaperTable", "paper_tables", "write_html", "write_table_csv", "write_table_json", "write_table_latex"]
