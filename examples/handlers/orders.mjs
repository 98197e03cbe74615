// An example in-house handler: "processes" an order and returns a receipt.
export default async function processOrder(job) {
  await new Promise((resolve) => setTimeout(resolve, 50));
  return { order: job.data, receipt: `r-${job.id}`, processedAt: new Date().toISOString() };
}
