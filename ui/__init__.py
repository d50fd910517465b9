"""The Streamlit page's parts (the only Streamlit code besides app.py): they turn widgets into core calls and core
results into elements. Policy (ranking, costs, call-outs) lives in planner/; what a screen shows lives in
planner/views/screens.py."""
