output "orders_topic_arn" {
  description = "Publish \"order placed\" events ({\"orderId\", \"items\", \"cents\"}) here."
  value       = aws_sns_topic.orders.arn
}

output "warehouse_queue_url" {
  description = "Send \"packed\" messages ({\"orderId\", \"parcel\"}) here."
  value       = aws_sqs_queue.warehouse.id
}

output "shipped_topic_arn" {
  description = "Subscribe to \"order shipped\" notifications here (a FIFO topic)."
  value       = aws_sns_topic.shipped.arn
}

output "table_name" {
  description = "The AWS World's table, for cairn inspect --aws."
  value       = module.workflow.table_name
}
