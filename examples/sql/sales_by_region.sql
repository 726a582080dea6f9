-- Total sales per region for one month ({{ month }} is a workflow variable).
SELECT region, ROUND(SUM(amount), 2) AS total, SUM(quantity) AS units
FROM orders.csv
WHERE strftime(order_date, '%Y-%m') = '{{ month }}'
GROUP BY region
ORDER BY total DESC
